// Write a batch of verbatim messages (System 1) with SOURCE and IN_SESSION links and their place
// in the conversation (turn_created, turn, search_text), planned before the write
// (graphmem.verbatim.order.plan_region); NEXT follows by ingest/relink_next in the same transaction.
// Runs under the group's lock (ingest/lock_group) for ids that lock found unstored, so it
// CREATEs (the (group_id, id) constraint refuses a duplicate); rerunning the transaction is
// safe. It advances the group's message_seq past the arrival numbers of the rows. A row without
// an embedding (ingest --embed later) is stored with the label :PendingEmbedding instead.
// Parameters: $group_id (str); $group_key (str, digits: the group's fulltext token,
//   graphmem.store.scope.group_key); $rows (list of maps): id, channel, text, speaker (display name),
//   person_id (str), session (str), ts (str ISO-8601), instant (float, epoch seconds),
//   order_instant (float, epoch seconds: the instant the message is ordered by), seq (int,
//   arrival number in the group), turn_created (int, 0-based position in the group), turn (int,
//   0-based position in the session), search_text (str, previous turn of the session +
//   "speaker: text"), reply_to (str), text_history (list[str], earlier texts when the
//   input itself edits the message), edited_at (list[str], ISO-8601 UTC, one per history entry),
//   embedding (list[float], L2-normed, or null), sentence_embeddings (list[float], the
//   sentences' vectors one after another, or null for a one-sentence text); $message_seq (int,
//   the group's next arrival number after these rows).
// Returns: written (int, messages created by this call).
CALL () {
  MATCH (g:Group {id: $group_id})
  SET g.message_seq = $message_seq
}
UNWIND $rows AS row
CREATE (m:Message {group_id: $group_id, id: row.id})
SET m.channel = row.channel, m.text = row.text, m.speaker = row.speaker,
    m.session = row.session, m.ts = row.ts, m.instant = row.instant,
    m.order_instant = row.order_instant, m.seq = row.seq, m.reply_to = row.reply_to,
    m.turn_created = row.turn_created, m.turn = row.turn, m.search_text = row.search_text,
    m.group_key = $group_key
FOREACH (_ IN CASE WHEN size(row.text_history) > 0 THEN [1] ELSE [] END |
  SET m.text_history = row.text_history, m.edited_at = row.edited_at)
WITH m, row
CALL (m, row) {
  WITH m, row WHERE row.embedding IS NOT NULL
  CALL db.create.setNodeVectorProperty(m, 'embedding', row.embedding)
  CALL (m, row) {  // float32, as the embedding (a plain SET would store doubles)
    WITH m, row WHERE row.sentence_embeddings IS NOT NULL
    CALL db.create.setNodeVectorProperty(m, 'sentence_embeddings', row.sentence_embeddings)
  }
}
CALL (m, row) {
  WITH m, row WHERE row.embedding IS NULL
  SET m:PendingEmbedding
}
WITH m, row
MATCH (p:Person {group_id: $group_id, id: row.person_id})
MATCH (s:Session {group_id: $group_id, id: row.session})
CREATE (m)-[:SOURCE]->(p)
CREATE (m)-[:IN_SESSION]->(s)
RETURN count(m) AS written
