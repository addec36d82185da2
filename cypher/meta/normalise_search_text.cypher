// Migration: put the fulltext documents of messages stored before documents were kept in NFC
// (graphmem.core.text.search_form) into NFC, $batch at a time, and move the vector_rev of
// their groups (cached BM25 statistics, graphmem.recall.cache, are rebuilt). The message's
// `text` and `speaker` are not touched; `search_grams` are NFKC already. Idempotent; call until
// it returns fewer than $batch.
// Parameters: $batch (int).
// Returns: updated (int, documents rewritten), groups (list[str], their group ids).
MATCH (m:Message)
WHERE m.search_text IS NOT NULL AND NOT m.search_text IS NFC NORMALIZED
WITH m LIMIT $batch
SET m.search_text = normalize(m.search_text, NFC)
WITH collect(DISTINCT m.group_id) AS groups, count(m) AS updated
CALL (groups) {
  UNWIND groups AS gid
  MATCH (g:Group {id: gid})
  SET g.vector_rev = coalesce(g.vector_rev, 0) + 1
}
RETURN updated, groups
