// Up to $batch messages of one group that still lack a vector (stored with --embed later).
// Parameters: $group_id (str), $batch (int).
// Returns: id (str), speaker (str), ts (str), text (str).
MATCH (m:PendingEmbedding {group_id: $group_id})
RETURN m.id AS id, m.speaker AS speaker, m.ts AS ts, m.text AS text
LIMIT $batch
