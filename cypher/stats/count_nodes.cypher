// Node counts by label, for the whole store or one group.
// Parameters: $group_id (str or null = whole store).
// Returns: label (str), count (int).
MATCH (n)
WHERE $group_id IS NULL OR n.group_id = $group_id OR (n:Group AND n.id = $group_id)
UNWIND labels(n) AS label
RETURN label, count(*) AS count
ORDER BY label
