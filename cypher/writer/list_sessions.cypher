// The session ids of one group (what a replay file's "session" keys must name).
// Parameters: $group_id (str).
// Returns, ordered by id: id (str, Session.id; "<channel>/<session>" when the group has channels).
MATCH (s:Session {group_id: $group_id})
RETURN s.id AS id
ORDER BY id
