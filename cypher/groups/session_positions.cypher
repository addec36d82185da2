// Where appended messages continue: each stored session's index and next turn, per channel.
// Parameters: $group_id (str).
// Returns: session (str), channel (str), index (int), next_turn (int, 1 + the highest stored
//   turn, 0 for a session without messages).
MATCH (s:Session {group_id: $group_id})
OPTIONAL MATCH (m:Message {group_id: $group_id})-[:IN_SESSION]->(s)
RETURN s.id AS session, coalesce(s.channel, '') AS channel, coalesce(s.index, 0) AS index,
       coalesce(max(m.turn), -1) + 1 AS next_turn
