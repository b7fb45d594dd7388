package wire

import (
	"context"
	"fmt"
	"sort"
	"strings"

	"google.golang.org/grpc"
	rpb "google.golang.org/grpc/reflection/grpc_reflection_v1"
	"google.golang.org/protobuf/reflect/protoreflect"
	"google.golang.org/protobuf/reflect/protoregistry"
)

// Services are the services the target describes, sorted by name: every
// service of its protoset, else every one its server reflection lists
// but reflection itself, each resolved as calls resolve their method
// (idemcheck init --grpc reads them to write a config).
func (g *GRPC) Services(ctx context.Context) ([]protoreflect.ServiceDescriptor, error) {
	var (
		names []string
		files *protoregistry.Files // the protoset's; else per service, by reflection
	)
	if g.t.Protoset != "" {
		var err error
		if files, err = ReadProtoset(g.t.Protoset); err != nil {
			return nil, err
		}
		files.RangeFiles(func(fd protoreflect.FileDescriptor) bool {
			for i := 0; i < fd.Services().Len(); i++ {
				names = append(names, string(fd.Services().Get(i).FullName()))
			}
			return true
		})
	}
	conn, err := g.baseClient()
	if err != nil {
		return nil, err
	}
	if files == nil {
		if err := withReflection(func(method string) (err error) {
			names, err = reflectServices(ctx, conn, method)
			return err
		}); err != nil {
			return nil, err
		}
	}
	sort.Strings(names)
	var out []protoreflect.ServiceDescriptor
	for _, name := range names {
		if strings.HasPrefix(name, "grpc.reflection.") {
			continue
		}
		fs := files
		if fs == nil {
			if fs, err = g.descriptors(ctx, conn, name); err != nil {
				return nil, err
			}
		}
		d, err := fs.FindDescriptorByName(protoreflect.FullName(name))
		if err != nil {
			return nil, fmt.Errorf("service %s: %v", name, g.where())
		}
		if sd, ok := d.(protoreflect.ServiceDescriptor); ok {
			out = append(out, sd)
		}
	}
	return out, nil
}

// reflectServices asks the reflection service at method for the names
// of the services the server offers.
func reflectServices(ctx context.Context, conn *grpc.ClientConn, method string) ([]string, error) {
	st, done, err := openReflection(ctx, conn, method)
	if err != nil {
		return nil, err
	}
	defer done()
	resp, err := reflectionAsk(st, &rpb.ServerReflectionRequest{MessageRequest: &rpb.ServerReflectionRequest_ListServices{}})
	if err != nil {
		return nil, err
	}
	var names []string
	for _, s := range resp.GetListServicesResponse().GetService() {
		names = append(names, s.GetName())
	}
	return names, nil
}
