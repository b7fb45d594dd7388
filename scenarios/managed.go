package scenarios

import "github.com/idemcheck/idemcheck/internal/managed"

// Managed returns the target process the harness controls, or nil.
func (e *Env) Managed() *managed.Process { return e.proc }
