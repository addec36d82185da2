// Keep derived records' turn_created (the position of their newest supporting message) in step
// when messages before it were placed or erased.
// Parameters: $group_id (str); $moves (map: old position as a decimal string -> new position),
//   $from (int, the smallest old position in $moves).
// Returns: shifted (int).
MATCH (d:Derived {group_id: $group_id})
WHERE d.turn_created >= $from
WITH d, $moves[toString(d.turn_created)] AS moved
WHERE moved IS NOT NULL
SET d.turn_created = moved
RETURN count(d) AS shifted
