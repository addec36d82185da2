// Arrival numbers of some messages of one group (a search's later pages leave out what arrived
// after its first page).
// Parameters: $group_id (str); $ids (list[str]).
// Returns: id (str), seq (int, the message's arrival number in the group; -1 when unknown).
UNWIND $ids AS mid
MATCH (m:Message {group_id: $group_id, id: mid})
RETURN m.id AS id, coalesce(m.seq, -1) AS seq
