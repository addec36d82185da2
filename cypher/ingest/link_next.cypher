// (Re)link one channel of a group in conversation order with NEXT (idempotent).
// Parameters: $group_id (str), $channel (str).
// Returns: links (int, NEXT relationships present on the channel after the call).
MATCH (m:Message {group_id: $group_id})
WHERE m.channel = $channel
WITH m ORDER BY m.turn_created
WITH collect(m) AS ms
UNWIND range(0, size(ms) - 2) AS i
WITH ms[i] AS a, ms[i + 1] AS b
MERGE (a)-[:NEXT]->(b)
RETURN count(*) AS links
