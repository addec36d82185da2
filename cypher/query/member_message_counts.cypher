// Message counts of some members of one group (a page of the roster).
// Parameters: $group_id (str); $ids (list[str], Person ids).
// Returns one row when the group exists (none otherwise): counts (list of [id (str), messages (int)],
//   in the order of $ids; 0 for an id that names no member).
MATCH (g:Group {id: $group_id})
RETURN [pid IN $ids | [pid, COUNT { MATCH (p:Person {group_id: $group_id, id: pid})<-[:SOURCE]-(:Message) }]]
       AS counts
