// Every constraint. Parameters: none.
// Returns: name (str), type (str), labels (list[str]), properties (list[str]).
SHOW CONSTRAINTS YIELD name, type, labelsOrTypes AS labels, properties
RETURN name, type, labels, properties
ORDER BY name
