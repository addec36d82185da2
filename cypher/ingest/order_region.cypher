// The messages of a group whose place may change: every message ordered at or after $from
// (new ones included), in conversation order.
// Parameters: $group_id (str), $from (float, epoch seconds: the earliest order_instant touched).
// Returns, ordered by (order_instant, seq): id, channel, session, order_instant (float), seq (int),
//   turn_created (int or null for a message placed by this transaction), turn (int or null),
//   speaker, text, search_text, next (str or null: the id its NEXT points to now).
MATCH (m:Message {group_id: $group_id})
USING INDEX m:Message(group_id, order_instant)  // the region only, whatever the statistics suggest
WHERE m.order_instant >= $from
RETURN m.id AS id, coalesce(m.channel, '') AS channel, m.session AS session,
       m.order_instant AS order_instant, m.seq AS seq, m.turn_created AS turn_created,
       m.turn AS turn, m.speaker AS speaker, m.text AS text, m.search_text AS search_text,
       [(m)-[:NEXT]->(n) | n.id][0] AS next
ORDER BY order_instant, seq
