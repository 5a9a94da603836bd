"""The runtime's SQL, one gateway module per concern: each named statement beside its SQLite fallback."""
