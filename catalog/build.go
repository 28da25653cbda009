package catalog

// Rows given already decoded, for a catalog that is not read from pages:
// walscope rows without a backup reads them from a file the DBA exports
// with psql (rows/walonly_catalog.go). Each keeps the row as Add keeps the
// row of its catalog's tuple.

// AddNamespace keeps a pg_namespace row.
func (c *Catalog) AddNamespace(x Namespace) {
	c.namespaces[x.OID] = &x
	c.nsByName[x.Name] = x.OID
}

// AddAttribute keeps a pg_attribute row.
func (c *Catalog) AddAttribute(x Attribute) {
	c.attributes[x.Relid] = append(c.attributes[x.Relid], x)
}

// AddType keeps a pg_type row.
func (c *Catalog) AddType(x Type) { c.types[x.OID] = &x }

// AddEnum keeps a pg_enum row.
func (c *Catalog) AddEnum(x Enum) { c.enums[x.TypID] = append(c.enums[x.TypID], x) }

// AddRange keeps a pg_range row.
func (c *Catalog) AddRange(x Range) {
	c.ranges[x.TypID] = x
	if x.Multirange != 0 {
		c.multiranges[x.Multirange] = x
	}
}

// AddIndex keeps a pg_index row.
func (c *Catalog) AddIndex(x Index) { c.indexes[x.IndexRelid] = &x }

// AddDatabase keeps a pg_database row.
func (c *Catalog) AddDatabase(x Database) { c.databases[x.OID] = &x }
