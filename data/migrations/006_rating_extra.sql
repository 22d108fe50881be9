-- Unknown fields of a rating record are kept, like those of every other record (DESIGN: never dropped).
ALTER TABLE ratings ADD COLUMN extra JSON;
