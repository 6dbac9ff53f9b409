// Package clientstore gives the module's own packages (the CLI, the
// dashboard, their tests) the storage behind a queuety.Client, which the
// Client does not hand to its users: the storage layer's rows and methods
// are sql/'s to change, not part of the public API.
//
// A Client embeds a Door under an unexported name. The Door's one method is
// unexported too, so only this package can call it, through Of; a user's
// module, which cannot import an internal package, has no way in. No
// package state is involved: each Client carries its own Door.
package clientstore

import store "github.com/queuety-go/queuety/sql"

// Door holds the storage of the value that embeds it.
type Door struct{ st *store.Store }

// NewDoor is the Door to st.
func NewDoor(st *store.Store) Door { return Door{st: st} }

func (d Door) clientStore() *store.Store { return d.st }

// holder is any value that embeds a Door (a *queuety.Client).
type holder interface{ clientStore() *store.Store }

// Of is the storage behind h, a *queuety.Client.
func Of(h holder) *store.Store { return h.clientStore() }
