-- The columns of the source's tables, for the schema check: a table or column missing, or one
-- the importer does not know, means a Queen version other than the one it reads.
SELECT c.table_schema, c.table_name, c.column_name
FROM information_schema.columns c
WHERE c.table_schema = ANY ($1::text[])
ORDER BY c.table_schema, c.table_name, c.ordinal_position;
