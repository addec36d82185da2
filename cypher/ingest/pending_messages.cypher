// Up to $batch messages of one group that still lack a vector (stored with --embed later),
// leaving out the ids of a batch that is being encoded or written meanwhile.
// Parameters: $group_id (str), $batch (int), $skip (list[str], message ids; may be empty).
// Returns: id (str), speaker (str), ts (str), text (str).
MATCH (m:PendingEmbedding {group_id: $group_id})
WHERE NOT m.id IN $skip
RETURN m.id AS id, m.speaker AS speaker, m.ts AS ts, m.text AS text
LIMIT $batch
