package poolset

// Known reports whether the key's cache has class, without asking the
// pool (which a read with row locks held would).
func (h *Handle) Known(class string) bool {
	_, ok := h.cached(class)
	return ok
}
