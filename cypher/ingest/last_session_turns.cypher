// The last stored message of each given session (to give a continued session its previous turn).
// Parameters: $group_id (str), $sessions (list[str]).
// Returns: session (str), speaker (str), text (str).
UNWIND $sessions AS sid
MATCH (m:Message {group_id: $group_id})
WHERE m.session = sid
WITH sid, m ORDER BY m.turn_created DESC
WITH sid, head(collect(m)) AS last
RETURN sid AS session, last.speaker AS speaker, last.text AS text
