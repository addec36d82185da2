// Write a batch of verbatim messages (System 1) with SOURCE and IN_SESSION links.
// Idempotent: a message whose (group_id, id) exists is left untouched. A row without an
// embedding (ingest --embed later) is stored with the label :PendingEmbedding instead.
// Parameters: $group_id (str); $group_key (str, digits: the group's fulltext token,
//   graphmem.scope.group_key); $rows (list of maps): id, channel, text, speaker (display name),
//   person_id (str), session (str), turn (int), ts (str ISO-8601), instant (float, epoch seconds),
//   turn_created (int, write order in the group), reply_to (str), embedding (list[float],
//   L2-normed, or null), search_text (str, previous turn + "speaker: text", the fulltext document).
// Returns: written (int, messages created by this call).
UNWIND $rows AS row
MERGE (m:Message {group_id: $group_id, id: row.id})
  ON CREATE SET m.channel = row.channel, m.text = row.text, m.speaker = row.speaker,
                m.session = row.session, m.turn = row.turn, m.ts = row.ts,
                m.instant = row.instant, m.turn_created = row.turn_created,
                m.reply_to = row.reply_to, m.search_text = row.search_text,
                m.group_key = $group_key, m.created_new = true
WITH m, row, coalesce(m.created_new, false) AS created
WHERE created
REMOVE m.created_new
WITH m, row
CALL (m, row) {
  WITH m, row WHERE row.embedding IS NOT NULL
  CALL db.create.setNodeVectorProperty(m, 'embedding', row.embedding)
}
CALL (m, row) {
  WITH m, row WHERE row.embedding IS NULL
  SET m:PendingEmbedding
}
WITH m, row
MATCH (p:Person {group_id: $group_id, id: row.person_id})
MATCH (s:Session {group_id: $group_id, id: row.session})
MERGE (m)-[:SOURCE]->(p)
MERGE (m)-[:IN_SESSION]->(s)
RETURN count(m) AS written
