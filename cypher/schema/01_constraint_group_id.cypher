// Uniqueness of Group.id. Parameters: none. Returns nothing.
CREATE CONSTRAINT group_id IF NOT EXISTS FOR (g:Group) REQUIRE g.id IS UNIQUE
