"""Read clinical reports and segment them into sections and sentences."""
