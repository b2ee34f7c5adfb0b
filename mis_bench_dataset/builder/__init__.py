"""Writing a build: the builder, its schema, Parquet shards, card, statistics and the Hub upload."""
