// State of one index by name (no row when it does not exist).
// Parameters: $name (str). Returns: state (str: ONLINE | POPULATING | FAILED).
SHOW INDEXES YIELD name, state
WHERE name = $name
RETURN state
