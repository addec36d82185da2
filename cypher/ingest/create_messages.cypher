// Write a batch of verbatim messages (System 1) with SOURCE and IN_SESSION links. Their place in
// the conversation (turn_created, turn, search_text, NEXT) is set afterwards by ingest/set_positions
// and ingest/relink_next in the same transaction.
// Idempotent: a message whose (group_id, id) exists is left untouched. A row without an
// embedding (ingest --embed later) is stored with the label :PendingEmbedding instead (a text-less
// one, no_text, with neither).
// Parameters: $group_id (str); $group_key (str, digits: the group's fulltext token,
//   graphmem.store.scope.group_key); $rows (list of maps): id, channel, text, speaker (display name),
//   person_id (str), session (str), ts (str ISO-8601), instant (float, epoch seconds),
//   order_instant (float, epoch seconds: the instant the message is ordered by), seq (int,
//   arrival number in the group), reply_to (str), text_history (list[str], earlier texts when the
//   input itself edits the message), edited_at (list[str], ISO-8601 UTC, one per history entry),
//   embedding (list[float], L2-normed, or null), sentence_embeddings (list[float], the
//   sentences' vectors one after another, or null for a one-sentence text), kind (str: "", "bot"
//   or "system"), no_text (bool, no visible character), attachment_names / attachment_types
//   (list[str], parallel), mentions (list[str], person ids), edited_ts (str ISO-8601 or ""),
//   edited (bool, the platform marks it edited).
// Returns: written (int, messages created by this call).
UNWIND $rows AS row
MERGE (m:Message {group_id: $group_id, id: row.id})
  ON CREATE SET m.channel = row.channel, m.text = row.text, m.speaker = row.speaker,
                m.session = row.session, m.ts = row.ts, m.instant = row.instant,
                m.order_instant = row.order_instant, m.seq = row.seq, m.reply_to = row.reply_to,
                m.group_key = $group_key, m.created_new = true,
                m.kind = row.kind, m.no_text = row.no_text, m.edited_ts = row.edited_ts, m.edited = row.edited,
                // lists only when not empty (as neo4j-admin import stores an empty array field: no property)
                m.attachment_names = CASE WHEN size(row.attachment_names) > 0 THEN row.attachment_names END,
                m.attachment_types = CASE WHEN size(row.attachment_types) > 0 THEN row.attachment_types END,
                m.mentions = CASE WHEN size(row.mentions) > 0 THEN row.mentions END
WITH m, row, coalesce(m.created_new, false) AS created
WHERE created
REMOVE m.created_new
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
CALL (m, row) {  // a text-less message gets no vector at all (not searched), so it is not pending
  WITH m, row WHERE row.embedding IS NULL AND NOT coalesce(row.no_text, false)
  SET m:PendingEmbedding
}
WITH m, row
MATCH (p:Person {group_id: $group_id, id: row.person_id})
MATCH (s:Session {group_id: $group_id, id: row.session})
MERGE (m)-[:SOURCE]->(p)
MERGE (m)-[:IN_SESSION]->(s)
RETURN count(m) AS written
