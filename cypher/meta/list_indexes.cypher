// Every index with its state and options (used to wait until ONLINE and to check dimensions).
// Parameters: none.
// Returns: name (str), type (str), state (str), labels (list[str]), properties (list[str]),
//          options (map).
SHOW INDEXES YIELD name, type, state, labelsOrTypes AS labels, properties, options
RETURN name, type, state, labels, properties, options
ORDER BY name
