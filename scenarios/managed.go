package scenarios

import "github.com/idemcheck/idemcheck/apispec"

// Managed returns the target process the harness controls, or nil.
func (e *Env) Managed() *apispec.Managed { return e.Target.Managed() }
