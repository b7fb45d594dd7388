package scenarios

// otherReplica is replica B: the first replica that is not the base URL.
func (e *Env) otherReplica() string {
	for _, r := range e.Target.Replicas {
		if r != e.Target.BaseURL {
			return r
		}
	}
	return e.Target.BaseURL
}
