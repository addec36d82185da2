// First and last message instants of one group (the years a date without a year may mean).
// Parameters: $group_id (str). Returns: first (float epoch seconds or null), last (same).
MATCH (m:Message {group_id: $group_id})
RETURN min(m.instant) AS first, max(m.instant) AS last
