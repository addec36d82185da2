// Store edits of messages: the new text and its embedding (no longer :PendingEmbedding if it
// was stored with --embed later), or, with ingest --embed later, no
// vector and the label :PendingEmbedding until `graphmem embed` fills it); the text it replaces
// (and any texts the input went through before the last one) is appended to the message's
// history; the message leaves every Writer segment that covered it, so the next derive
// reconsiders it. A row applies only while the stored text is still the one the edit was
// computed against.
// Parameters: $group_id (str); $rows (list of maps): id (str), old_text (str, the stored text
//   the edit replaces), text (str, the new text), between (list[str], intermediate texts from the
//   same input, oldest first), edited_at (str, ISO-8601 UTC), embedding (list[float],
//   L2-normed, or null), sentence_embeddings (list[float], the new text's sentence vectors one
//   after another, or null: a one-sentence text, or none computed; an old one is removed),
//   no_text (bool, the new text has no visible character), edited_ts (str, the platform's edit
//   time or ""), edited (bool), attachment_names / attachment_types / mentions (list[str], as now exported).
// Moves the group's vector_rev when a message changed (graphmem.recall.cache).
// Returns: edited (int, messages changed), uncovered (int, COVERS links removed).
UNWIND $rows AS row
MATCH (m:Message {group_id: $group_id, id: row.id})
USING INDEX m:Message(group_id, id)
WHERE m.text = row.old_text
SET m.text_history = coalesce(m.text_history, []) + [m.text] + row.between,
    m.edited_at = coalesce(m.edited_at, []) + [x IN [m.text] + row.between | row.edited_at],
    m.text = row.text, m.no_text = row.no_text, m.edited_ts = row.edited_ts, m.edited = row.edited,
    m.attachment_names = CASE WHEN size(row.attachment_names) > 0 THEN row.attachment_names END,
    m.attachment_types = CASE WHEN size(row.attachment_types) > 0 THEN row.attachment_types END,
    m.mentions = CASE WHEN size(row.mentions) > 0 THEN row.mentions END
WITH m, row
CALL (m, row) {
  WITH m, row WHERE row.embedding IS NOT NULL
  CALL db.create.setNodeVectorProperty(m, 'embedding', row.embedding)
  REMOVE m.sentence_embeddings
  WITH m, row
  CALL (m, row) {  // the new text's sentences (float32, as the embedding), if it has several
    WITH m, row WHERE row.sentence_embeddings IS NOT NULL
    CALL db.create.setNodeVectorProperty(m, 'sentence_embeddings', row.sentence_embeddings)
  }
  REMOVE m:PendingEmbedding
}
CALL (m, row) {
  WITH m, row WHERE row.embedding IS NULL
  REMOVE m.embedding, m.sentence_embeddings
  WITH m, row WHERE NOT coalesce(row.no_text, false)  // a text-less text gets no vector: not pending
  SET m:PendingEmbedding
}
WITH m
CALL (m) {
  OPTIONAL MATCH (m)<-[c:COVERS]-(:Segment)
  DELETE c
  RETURN count(c) AS uncovered
}
WITH count(m) AS edited, sum(uncovered) AS uncovered
CALL (edited) {
  WITH edited WHERE edited > 0  // the group's vector revision: process caches of its vectors reload
  MATCH (g:Group {id: $group_id})
  SET g.vector_rev = coalesce(g.vector_rev, 0) + 1
}
RETURN edited, uncovered
