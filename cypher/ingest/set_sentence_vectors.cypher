// Store the sentence vectors of messages that have a vector but none for their sentences, only
// while the run still holds the group's embed lease (as ingest/set_message_vectors, renewed
// here) and only while the message still has the text that was encoded; a message that got
// them meanwhile is left as it is, so this is idempotent.
// Parameters: $group_id (str); $runner (str); $lease_until (float, epoch seconds); $rows (list
//   of maps): id (str), text (str, the text that was encoded), sentence_embeddings (list[float]).
// Moves the group's vector_rev when a vector was written (graphmem.recall.cache).
// Returns (no row for an unknown group, or one being erased: groups/fence_group): held (bool), runner (str), written (int).
MATCH (g:Group {id: $group_id}) WHERE g.erasing IS NULL
SET g._LOCK_ = true
WITH g, coalesce(g.embed_runner = $runner, false) AS held
SET g.embed_lease_until = CASE WHEN held THEN $lease_until ELSE g.embed_lease_until END
REMOVE g._LOCK_
WITH held, g.embed_runner AS runner
CALL (held) {
  WITH held WHERE held
  UNWIND $rows AS row
  MATCH (m:Message {group_id: $group_id, id: row.id})
  USING INDEX m:Message(group_id, id)
  WHERE m.text = row.text AND m.embedding IS NOT NULL AND m.sentence_embeddings IS NULL
  CALL db.create.setNodeVectorProperty(m, 'sentence_embeddings', row.sentence_embeddings)
  RETURN count(m) AS written
}
WITH held, runner, written
CALL (written) {
  WITH written WHERE written > 0
  MATCH (g:Group {id: $group_id})
  SET g.vector_rev = coalesce(g.vector_rev, 0) + 1
}
RETURN held, runner, written
