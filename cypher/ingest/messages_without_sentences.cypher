// One page of a group's messages that have a vector but no sentence vectors (stored before
// sentence vectors existed, or with GRAPHMEM_SENTENCE_VECTORS off), in id order after $after:
// graphmem.verbatim.vectors.embed_group(..., sentences=True) fills those of several sentences.
// Parameters: $group_id (str), $after (str, the last id of the previous page; "" first),
//   $batch (int).
// Returns: id (str), speaker (str), ts (str), text (str), by id.
MATCH (m:Message {group_id: $group_id})
WHERE m.id > $after AND m.embedding IS NOT NULL AND m.sentence_embeddings IS NULL
RETURN m.id AS id, m.speaker AS speaker, m.ts AS ts, m.text AS text
ORDER BY m.id
LIMIT $batch
