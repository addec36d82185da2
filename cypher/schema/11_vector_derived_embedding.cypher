// Vector index (cosine) over derived record embeddings.
// Parameters: $dimensions (int, the configured embedder's dimension). Returns nothing.
CREATE VECTOR INDEX derived_embedding IF NOT EXISTS FOR (d:Derived) ON d.embedding
OPTIONS {indexConfig: {`vector.dimensions`: $dimensions, `vector.similarity_function`: 'cosine'}}
