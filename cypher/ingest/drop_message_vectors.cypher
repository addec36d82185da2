// One batch of graphmem embed --rebuild: drop the vectors of up to $limit messages of the group
// that still have one and mark them :PendingEmbedding, so graphmem embed fills them again.
// Parameters: $group_id (str), $limit (int).
// Returns: dropped (int, 0 when none was left).
MATCH (m:Message {group_id: $group_id})
WHERE m.embedding IS NOT NULL OR m.sentence_embeddings IS NOT NULL
WITH m LIMIT $limit
REMOVE m.embedding, m.sentence_embeddings
SET m:PendingEmbedding
RETURN count(m) AS dropped
