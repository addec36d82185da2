// What lies just before the region of ingest/order_region: the number of messages ordered before
// $from (the region's first position), and per channel and per session the last message before
// $from (the region's predecessor on NEXT, and the previous turn of its first message).
// Parameters: $group_id (str), $from (float, epoch seconds), $channels (list[str]),
//   $sessions (list[str]).
// Returns one row: base (int, first turn_created of the region), channels (list of maps:
//   channel, id (str or null), next (str or null, where its NEXT points now)), sessions (list of
//   maps: session, id (str or null), turn (int or null), speaker, text).
CALL () {
  MATCH (m:Message {group_id: $group_id})
  WHERE m.turn_created IS NOT NULL AND m.order_instant < $from
  WITH m ORDER BY m.turn_created DESC LIMIT 1
  RETURN collect(m.turn_created) AS last
}
CALL () {
  UNWIND $channels AS ch
  CALL (ch) {
    MATCH (p:Message {group_id: $group_id})
    WHERE p.order_instant < $from AND coalesce(p.channel, '') = ch
    WITH p ORDER BY p.order_instant DESC, p.seq DESC LIMIT 1
    RETURN collect({id: p.id, next: [(p)-[:NEXT]->(n) | n.id][0]}) AS found
  }
  RETURN collect({channel: ch, id: found[0].id, next: found[0].next}) AS channels
}
CALL () {
  UNWIND $sessions AS sid
  CALL (sid) {
    MATCH (p:Message {group_id: $group_id})
    WHERE p.order_instant < $from AND p.session = sid
    WITH p ORDER BY p.order_instant DESC, p.seq DESC LIMIT 1
    RETURN collect(p) AS found
  }
  RETURN collect({session: sid, id: found[0].id, turn: found[0].turn,
                  speaker: found[0].speaker, text: found[0].text}) AS sessions
}
RETURN coalesce(last[0], -1) + 1 AS base, channels, sessions
