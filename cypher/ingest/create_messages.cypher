// Write a batch of verbatim messages (System 1) with SOURCE and IN_SESSION links, their place in
// the conversation (turn_created, turn, search_text), planned before the write
// (graphmem.verbatim.order.plan_region), and the NEXT links between two of them ($next); NEXT
// links from or to stored messages follow by ingest/relink_next in the same transaction. The
// batch's speakers and sessions are looked up once each ($persons, $sessions), not per row.
// Runs under the group's lock (ingest/lock_group) for ids that lock found unstored, so it
// CREATEs (the (group_id, id) constraint refuses a duplicate); rerunning the transaction is
// safe. It advances the group's message_seq past the arrival numbers of the rows. A row without
// an embedding (ingest --embed later) is stored with the label :PendingEmbedding instead (a
// text-less one, no_text, with neither).
// Parameters: $group_id (str); $group_key (str, digits: the group's fulltext token,
//   graphmem.store.scope.group_key); $rows (list of maps): id, channel, text, speaker (display name),
//   person (int, index into $persons), session (str), session_at (int, index into $sessions),
//   ts (str ISO-8601), instant (float, epoch seconds),
//   order_instant (float, epoch seconds: the instant the message is ordered by), seq (int,
//   arrival number in the group), turn_created (int, 0-based position in the group), turn (int,
//   0-based position in the session), search_text (str, previous turn of the session +
//   "speaker: text"), search_grams (str or null: bigrams of unspaced scripts in search_text,
//   graphmem.core.text.gram_field), reply_to (str), text_history (list[str], earlier texts when the
//   input itself edits the message, or null), edited_at (list[str], ISO-8601 UTC, one per
//   history entry, or null),
//   embedding (list[float], L2-normed, or null), sentence_embeddings (list[float], the
//   sentences' vectors one after another, or null for a one-sentence text), kind (str: "", "bot"
//   or "system"), no_text (bool, no visible character), attachment_names / attachment_types
//   (list[str], parallel), mentions (list[str], person ids), edited_ts (str ISO-8601 or ""),
//   edited (bool, the platform marks it edited); $message_seq (int,
//   the group's next arrival number after these rows); $persons (list[str], person ids of
//   the rows' speakers, stored); $sessions (list[str], session ids, stored); $next (list of
//   [int, int]: NEXT from row i to row j).
// Returns: written (int, messages created by this call).
CALL () {
  MATCH (g:Group {id: $group_id})
  SET g.message_seq = $message_seq
}
CALL () {
  UNWIND range(0, size($persons) - 1) AS i
  OPTIONAL MATCH (p:Person {group_id: $group_id, id: $persons[i]})
  WITH i, p ORDER BY i
  RETURN collect({node: p}) AS people  // one entry per id, in order (a missing one: null, and the CREATE fails)
}
CALL () {
  UNWIND range(0, size($sessions) - 1) AS i
  OPTIONAL MATCH (s:Session {group_id: $group_id, id: $sessions[i]})
  WITH i, s ORDER BY i
  RETURN collect({node: s}) AS sessions
}
UNWIND range(0, size($rows) - 1) AS i
WITH people, sessions, i, $rows[i] AS row
CREATE (m:Message {group_id: $group_id, id: row.id, channel: row.channel, text: row.text,
                   speaker: row.speaker, session: row.session, ts: row.ts, instant: row.instant,
                   order_instant: row.order_instant, seq: row.seq, reply_to: row.reply_to,
                   turn_created: row.turn_created, turn: row.turn, search_text: row.search_text,
                   search_grams: row.search_grams,
                   group_key: $group_key, text_history: row.text_history, edited_at: row.edited_at,
                   kind: row.kind, no_text: row.no_text, edited_ts: row.edited_ts, edited: row.edited,
                   // lists only when not empty (as neo4j-admin import stores an empty array field: no property)
                   attachment_names: CASE WHEN size(row.attachment_names) > 0 THEN row.attachment_names END,
                   attachment_types: CASE WHEN size(row.attachment_types) > 0 THEN row.attachment_types END,
                   mentions: CASE WHEN size(row.mentions) > 0 THEN row.mentions END})
WITH people, sessions, i, row, m, people[row.person].node AS p, sessions[row.session_at].node AS s
CREATE (m)-[:SOURCE]->(p)
CREATE (m)-[:IN_SESSION]->(s)
// a text-less message gets no vector at all (not searched), so it is not pending either
FOREACH (_ IN CASE WHEN row.embedding IS NULL AND NOT coalesce(row.no_text, false) THEN [1] ELSE [] END |
  SET m:PendingEmbedding)
WITH i, row, m
CALL (m, row) {
  WITH m, row WHERE row.embedding IS NOT NULL
  CALL db.create.setNodeVectorProperty(m, 'embedding', row.embedding)
  CALL (m, row) {  // float32, as the embedding (a plain SET would store doubles)
    WITH m, row WHERE row.sentence_embeddings IS NOT NULL
    CALL db.create.setNodeVectorProperty(m, 'sentence_embeddings', row.sentence_embeddings)
  }
}
WITH i, m ORDER BY i
WITH collect(m) AS created
CALL (created) {
  UNWIND $next AS pair
  WITH created[pair[0]] AS a, created[pair[1]] AS b
  CREATE (a)-[:NEXT]->(b)
}
RETURN size(created) AS written
