// Vector index (cosine) over message embeddings.
// Parameters: $dimensions (int, the configured embedder's dimension, e.g. 384). Returns nothing.
CREATE VECTOR INDEX message_embedding IF NOT EXISTS FOR (m:Message) ON m.embedding
OPTIONS {indexConfig: {`vector.dimensions`: $dimensions, `vector.similarity_function`: 'cosine'}}
