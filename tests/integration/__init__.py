"""Integration tests: the real local Neo4j (each test under its own fresh group_id)."""
