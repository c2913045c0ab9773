"""IR metrics, benchmark builders and method comparison."""
