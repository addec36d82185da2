// What lies just before the region of ingest/order_region: the number of messages ordered before
// $from (the region's first position), and per channel and per session the last message before
// $from (the region's predecessor on NEXT, and the previous turn of its first message).
// Each part reads only near $from, never the whole group: the position from the message_order
// index read backwards (it skips the region, then stops at the first placed message before
// $from), a channel's predecessor from the message_instant index read backwards from $from, a
// session's from the session's own messages (its IN_SESSION links).
// Parameters: $group_id (str), $from (float, epoch seconds), $channels (list[str]),
//   $sessions (list[str]).
// Returns one row: base (int, first turn_created of the region), channels (list of maps:
//   channel, id (str or null), next (str or null, where its NEXT points now)), sessions (list of
//   maps: session, id (str or null), turn (int or null), speaker, text).
CALL () {
  MATCH (m:Message {group_id: $group_id})
  USING INDEX m:Message(group_id, turn_created)
  WHERE m.turn_created IS NOT NULL AND m.order_instant < $from
  WITH m ORDER BY m.group_id, m.turn_created DESC LIMIT 1
  RETURN collect(m.turn_created) AS last
}
CALL () {
  UNWIND $channels AS ch
  CALL (ch) {
    MATCH (p:Message {group_id: $group_id})
    USING INDEX p:Message(group_id, order_instant)
    WHERE p.order_instant < $from AND coalesce(p.channel, '') = ch
    WITH p ORDER BY p.group_id, p.order_instant DESC, p.seq DESC LIMIT 1
    RETURN collect({id: p.id, next: [(p)-[:NEXT]->(n) | n.id][0]}) AS found
  }
  RETURN collect({channel: ch, id: found[0].id, next: found[0].next}) AS channels
}
CALL () {
  UNWIND $sessions AS sid
  CALL (sid) {
    MATCH (:Session {group_id: $group_id, id: sid})<-[:IN_SESSION]-(p:Message)
    WHERE p.order_instant < $from
    WITH p ORDER BY p.order_instant DESC, p.seq DESC LIMIT 1
    RETURN collect(p) AS found
  }
  RETURN collect({session: sid, id: found[0].id, turn: found[0].turn,
                  speaker: found[0].speaker, text: found[0].text}) AS sessions
}
RETURN coalesce(last[0], -1) + 1 AS base, channels, sessions
