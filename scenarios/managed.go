package scenarios

import "github.com/idemcheck/idemcheck/target"

// Managed returns the target process the harness controls, or nil.
func (e *Env) Managed() *target.Managed { return e.Target.Managed() }
