// Groups that have messages without the fulltext group token (migration of older stores).
// Parameters: none. Returns: group_id (str).
MATCH (m:Message)
WHERE m.group_key IS NULL
RETURN DISTINCT m.group_id AS group_id
