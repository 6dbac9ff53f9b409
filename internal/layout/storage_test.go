package layout

import (
	"go/types"
	"slices"
	"strings"
	"testing"
)

// storage is the storage layer's package (package store): the only place
// that knows the tables' rows and runs statements.
const storage = module + "/sql"

// The storage layer's rows and methods are sql/'s own. A public package
// that returned *store.Store or a store row would make every column and
// every method of the storage layer part of the API users build on, and
// sql/ could no longer change without breaking them: a user who lists
// jobs would import a package named store. Users get views of their own
// (queuety.JobInfo, LogEntry, QueueStats, …, converted from rows in
// queuety/internal/rowview), and the module's own packages reach the
// store from inside (queuety/internal/clientstore). So no exported
// identifier of a public package other than sql names a type declared
// in sql, directly or through an alias.
func TestPublicAPINamesNoStoreTypes(t *testing.T) {
	var public []string
	for _, p := range goList(t, "./...") {
		if p.Name != "main" && !internalPath(p.ImportPath) && len(p.GoFiles) > 0 {
			public = append(public, p.ImportPath)
		}
	}
	if !slices.Contains(public, storage) {
		t.Fatalf("public packages %v lack %s", public, storage)
	}
	c := newAPIChecker(t, public)
	c.sealed = storage
	for _, path := range public {
		if path != storage {
			c.checkPackage(c.pkgs[path])
		}
	}
	for _, f := range c.found {
		if !strings.Contains(f, "a storage type") {
			continue // TestPublicAPINamesPublicTypes reports the others
		}
		t.Error(f + ": give the API a view of its own (queuety/internal/rowview)")
	}
}

// rawHandles are the database handles that run statements inside a
// transaction, or on whatever the holder passes: a transaction and the
// querier interfaces a transaction satisfies.
var rawHandles = map[string]bool{
	"database/sql.Tx": true, "database/sql.Conn": true,
	"github.com/jmoiron/sqlx.Tx": true, "github.com/jmoiron/sqlx.Conn": true,
	"github.com/jmoiron/sqlx.Ext": true, "github.com/jmoiron/sqlx.ExtContext": true,
	"github.com/jmoiron/sqlx.Queryer": true, "github.com/jmoiron/sqlx.QueryerContext": true,
	"github.com/jmoiron/sqlx.Execer": true, "github.com/jmoiron/sqlx.ExecerContext": true,
}

// No raw transaction is handed out of sql/: a caller that holds the
// claim's or a workflow step's transaction could run any statement in it,
// and the storage layer's named queries would no longer be the only way
// to the tables. Statements that must commit with a transaction are named
// methods of the type that holds it (ClaimTx.Sessions, Store.SessionTx).
// So no exported function, method or field of sql gives out a transaction
// or a querier: not as a result, not as a field, and not as the argument
// of a callback it calls. (A handle passed in, like CreateDatabase's, is
// the caller's own; Store.DB is the pool, which tests write fixtures on.)
func TestStoreHandsOutNoTransaction(t *testing.T) {
	c := newAPIChecker(t, []string{storage})
	pkg := c.pkgs[storage]
	var found []string
	check := func(ident string, sig *types.Signature) {
		for i := range sig.Results().Len() {
			if h := rawHandle(sig.Results().At(i).Type()); h != "" {
				found = append(found, ident+" returns "+h)
			}
		}
		for i := range sig.Params().Len() {
			cb, ok := sig.Params().At(i).Type().Underlying().(*types.Signature)
			if !ok {
				continue
			}
			for k := range cb.Params().Len() {
				if h := rawHandle(cb.Params().At(k).Type()); h != "" {
					found = append(found, ident+" passes its callback "+h)
				}
			}
		}
	}
	scope := pkg.Scope()
	for _, name := range scope.Names() {
		switch obj := scope.Lookup(name).(type) {
		case *types.Func:
			if obj.Exported() {
				check("sql."+name, obj.Type().(*types.Signature))
			}
		case *types.TypeName:
			n, ok := obj.Type().(*types.Named)
			if !ok || !obj.Exported() {
				continue
			}
			ms := types.NewMethodSet(types.NewPointer(n))
			for i := range ms.Len() {
				if m := ms.At(i).Obj(); m.Exported() {
					check("sql."+name+"."+m.Name(), m.Type().(*types.Signature))
				}
			}
			if st, ok := n.Underlying().(*types.Struct); ok {
				for i := range st.NumFields() {
					if f := st.Field(i); f.Exported() && rawHandle(f.Type()) != "" {
						found = append(found, "sql."+name+"."+f.Name()+" holds "+rawHandle(f.Type()))
					}
				}
			}
		}
	}
	for _, f := range found {
		t.Error(f + ": give the statement a name on the type that holds the transaction")
	}
}

// rawHandle names t when it is a raw handle (or a pointer to one).
func rawHandle(t types.Type) string {
	if p, ok := t.(*types.Pointer); ok {
		t = p.Elem()
	}
	n, ok := types.Unalias(t).(*types.Named)
	if !ok || n.Obj().Pkg() == nil {
		return ""
	}
	name := n.Obj().Pkg().Path() + "." + n.Obj().Name()
	if rawHandles[name] {
		return name
	}
	return ""
}
