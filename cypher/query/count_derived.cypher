// Number of derived records in one group and in the whole store (bounds fulltext widening).
// Parameters: $group_id (str). Returns: group_count (int), total_count (int).
OPTIONAL MATCH (d:Derived {group_id: $group_id})
WITH count(d) AS group_count
OPTIONAL MATCH (n:Derived)
RETURN group_count, count(n) AS total_count
