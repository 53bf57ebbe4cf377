"""Sentence embeddings for the fuzzy methods: the model (embedder) apart from the vectors
PostgreSQL stores and searches (embeddings), so the ingest and selection code reach numpy and
sentence-transformers only when a fuzzy method asks for them."""
