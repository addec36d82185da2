// Store vectors of messages that lack one and clear their :PendingEmbedding label, only while
// the run still holds the group's embed lease (graphmem.verbatim.vectors.embed_group), checked in this
// same transaction under the Group node's lock, and renewed by it: a run whose lease ran out
// and was taken over (the process was paused, say) writes nothing. A message that got its
// vector meanwhile (a concurrent run) is left as it is, so this is idempotent; a message whose
// text changed since it was read (an edit during `graphmem embed`) is left pending, so no
// message keeps the vector of a text it no longer has.
// Parameters: $group_id (str); $runner (str, the run id holding the lease);
//   $lease_until (float, epoch seconds, the renewed end of the lease); $rows (list of maps):
//   id (str), text (str, the text that was encoded), embedding (list[float], L2-normed),
//   sentence_embeddings (list[float] or null, as ingest/create_messages).
// Moves the group's vector_rev when a vector was written (graphmem.recall.cache).
// Returns (no row for an unknown group, or one being erased: groups/fence_group): held (bool, the run still held the lease; false:
//   nothing written), runner (str, the holder now), written (int).
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
  USING INDEX m:Message(group_id, id)  // a seek per row, whatever the statistics of the moment
  WHERE m:PendingEmbedding AND m.text = row.text
  CALL db.create.setNodeVectorProperty(m, 'embedding', row.embedding)
  CALL (m, row) {  // float32, as the embedding
    WITH m, row WHERE row.sentence_embeddings IS NOT NULL
    CALL db.create.setNodeVectorProperty(m, 'sentence_embeddings', row.sentence_embeddings)
  }
  REMOVE m:PendingEmbedding
  RETURN count(m) AS written
}
WITH held, runner, written
CALL (written) {
  WITH written WHERE written > 0  // the group's vector revision: process caches of its vectors reload
  MATCH (g:Group {id: $group_id})
  SET g.vector_rev = coalesce(g.vector_rev, 0) + 1
}
RETURN held, runner, written
