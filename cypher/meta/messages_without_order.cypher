// Migration: groups holding messages stored before messages had an order key (order_instant, seq).
// Parameters: none.
// Returns: group_id (str), messages (list of maps: id, channel, instant (float), in the order the
//   older store linked them: turn_created, then id).
MATCH (m:Message)
WHERE m.order_instant IS NULL OR m.seq IS NULL
WITH DISTINCT m.group_id AS gid
MATCH (x:Message {group_id: gid})
WITH gid, x ORDER BY x.turn_created, x.id
RETURN gid AS group_id,
       collect({id: x.id, channel: coalesce(x.channel, ''), instant: x.instant}) AS messages
