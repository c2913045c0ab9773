"""Train retrieval models from lexicon weak labels."""
