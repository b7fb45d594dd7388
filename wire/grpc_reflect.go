package wire

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/url"
	"os"
	"sort"
	"strings"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	rpb "google.golang.org/grpc/reflection/grpc_reflection_v1"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/reflect/protodesc"
	"google.golang.org/protobuf/reflect/protoreflect"
	"google.golang.org/protobuf/reflect/protoregistry"
	"google.golang.org/protobuf/types/descriptorpb"
)

// Method resolves path (/package.Service/Method) as calls do: by server
// reflection or the protoset. The chaos proxy decodes the messages it
// forwards (the key, the created id) with it.
func (g *GRPC) Method(ctx context.Context, path string) (protoreflect.MethodDescriptor, error) {
	conn, err := g.baseClient()
	if err != nil {
		return nil, err
	}
	m, err := g.resolved(ctx, conn, path)
	if err != nil {
		return nil, err
	}
	return m.md, nil
}

// baseClient is the connection to the base URL's server (replicas serve
// one API: its descriptors are asked there).
func (g *GRPC) baseClient() (*grpc.ClientConn, error) {
	u, err := url.Parse(g.t.BaseURL)
	if err != nil {
		return nil, err
	}
	return g.client(u)
}

// resolved is the method at path (/package.Service/Method), resolved
// once.
func (g *GRPC) resolved(ctx context.Context, conn *grpc.ClientConn, path string) (*grpcMethod, error) {
	g.mu.Lock()
	defer g.mu.Unlock()
	if m, ok := g.methods[path]; ok {
		return m, nil
	}
	svc, name, ok := strings.Cut(strings.TrimPrefix(path, "/"), "/")
	if !ok || svc == "" || name == "" {
		return nil, fmt.Errorf("%q is not /package.Service/Method", path)
	}
	// A protoset is read once; reflection is asked per service (a file
	// that defines one need not define another).
	files := g.files
	if files == nil || g.t.Protoset == "" {
		var err error
		if files, err = g.descriptors(ctx, conn, svc); err != nil {
			return nil, err
		}
		if g.t.Protoset != "" {
			g.files = files
		}
	}
	d, err := files.FindDescriptorByName(protoreflect.FullName(svc))
	if err != nil {
		return nil, fmt.Errorf("service %s: %v", svc, g.where())
	}
	sd, ok := d.(protoreflect.ServiceDescriptor)
	if !ok {
		return nil, fmt.Errorf("%s is not a service", svc)
	}
	md := sd.Methods().ByName(protoreflect.Name(name))
	if md == nil {
		return nil, fmt.Errorf("service %s has no method %s", svc, name)
	}
	if md.IsStreamingClient() || md.IsStreamingServer() {
		return nil, fmt.Errorf("%s is a streaming method; idemcheck calls unary methods", path)
	}
	m := &grpcMethod{md: md}
	g.methods[path] = m
	return m, nil
}

// where says where the descriptors came from, for an error.
func (g *GRPC) where() string {
	if g.t.Protoset != "" {
		return "not in protoset " + g.t.Protoset
	}
	return "not known to the server's reflection"
}

// descriptors are the target's protoset, or the files server reflection
// gives for symbol with every file they import.
func (g *GRPC) descriptors(ctx context.Context, conn *grpc.ClientConn, symbol string) (*protoregistry.Files, error) {
	if g.t.Protoset != "" {
		return ReadProtoset(g.t.Protoset)
	}
	var fds []*descriptorpb.FileDescriptorProto
	if err := withReflection(func(method string) (err error) {
		fds, err = reflectFiles(ctx, conn, method, symbol)
		return err
	}); err != nil {
		return nil, err
	}
	files, err := protodesc.NewFiles(&descriptorpb.FileDescriptorSet{File: fds})
	if err != nil {
		return nil, fmt.Errorf("server reflection: the descriptors do not build: %v", err)
	}
	return files, nil
}

// ErrNoReflection: the server offers neither grpc.reflection.v1 nor
// v1alpha (a protoset must describe its methods).
var ErrNoReflection = errors.New("the server offers no reflection")

// withReflection runs ask against the reflection service, v1 else
// v1alpha (the same messages on the wire).
func withReflection(ask func(method string) error) error {
	var last error
	for _, m := range []string{"/grpc.reflection.v1.ServerReflection/ServerReflectionInfo", "/grpc.reflection.v1alpha.ServerReflection/ServerReflectionInfo"} {
		err := ask(m)
		if status.Code(err) == codes.Unimplemented {
			last = err
			continue
		}
		if err != nil {
			return fmt.Errorf("server reflection: %v", err)
		}
		return nil
	}
	return fmt.Errorf("%w (grpc.reflection.v1 or v1alpha: %v); give protoset: a descriptor set file (protoc --include_imports --descriptor_set_out)", ErrNoReflection, last)
}

// ReadProtoset reads a descriptor set file (protoc --include_imports
// --descriptor_set_out).
func ReadProtoset(path string) (*protoregistry.Files, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("protoset: %v", err)
	}
	var set descriptorpb.FileDescriptorSet
	if err := proto.Unmarshal(b, &set); err != nil {
		return nil, fmt.Errorf("protoset %s: not a FileDescriptorSet: %v", path, err)
	}
	files, err := protodesc.NewFiles(&set)
	if err != nil {
		return nil, fmt.Errorf("protoset %s: %v (made with --include_imports?)", path, err)
	}
	return files, nil
}

// maxReflected bounds the files one resolution reads: an import graph
// larger than this is not a payments API.
const maxReflected = 1000

// openReflection opens a stream to the reflection service at method,
// bounded to 10 s; done closes it.
func openReflection(ctx context.Context, conn *grpc.ClientConn, method string) (st grpc.ClientStream, done func(), err error) {
	ctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	if st, err = conn.NewStream(ctx, &grpc.StreamDesc{ServerStreams: true, ClientStreams: true}, method); err != nil {
		cancel()
		return nil, nil, err
	}
	return st, func() { _ = st.CloseSend(); cancel() }, nil
}

// reflectFiles asks the reflection service at method (v1 or v1alpha: the
// same messages on the wire) for the file defining symbol, then for each
// file it imports that did not come with it.
func reflectFiles(ctx context.Context, conn *grpc.ClientConn, method, symbol string) ([]*descriptorpb.FileDescriptorProto, error) {
	st, done, err := openReflection(ctx, conn, method)
	if err != nil {
		return nil, err
	}
	defer done()
	have := map[string]*descriptorpb.FileDescriptorProto{}
	ask := func(req *rpb.ServerReflectionRequest) error {
		resp, err := reflectionAsk(st, req)
		if err != nil {
			return err
		}
		for _, b := range resp.GetFileDescriptorResponse().GetFileDescriptorProto() {
			fd := new(descriptorpb.FileDescriptorProto)
			if err := proto.Unmarshal(b, fd); err != nil {
				return fmt.Errorf("a file descriptor does not decode: %v", err)
			}
			have[fd.GetName()] = fd
		}
		return nil
	}
	if err := ask(&rpb.ServerReflectionRequest{MessageRequest: &rpb.ServerReflectionRequest_FileContainingSymbol{FileContainingSymbol: symbol}}); err != nil {
		return nil, err
	}
	for len(have) < maxReflected {
		var missing []string
		for _, fd := range have {
			for _, dep := range fd.GetDependency() {
				if have[dep] == nil {
					missing = append(missing, dep)
				}
			}
		}
		if len(missing) == 0 {
			break
		}
		sort.Strings(missing)
		if err := ask(&rpb.ServerReflectionRequest{MessageRequest: &rpb.ServerReflectionRequest_FileByFilename{FileByFilename: missing[0]}}); err != nil {
			return nil, err
		}
		if have[missing[0]] == nil {
			return nil, fmt.Errorf("the server did not give %s", missing[0])
		}
	}
	out := make([]*descriptorpb.FileDescriptorProto, 0, len(have))
	for _, fd := range have {
		out = append(out, fd)
	}
	return out, nil
}

// reflectionAsk sends one request on a reflection stream and reads its
// answer; an error answer is an error with its code.
func reflectionAsk(st grpc.ClientStream, req *rpb.ServerReflectionRequest) (*rpb.ServerReflectionResponse, error) {
	resp := new(rpb.ServerReflectionResponse)
	if err := st.SendMsg(req); err == io.EOF {
		return nil, st.RecvMsg(resp) // the stream ended: its status says why
	} else if err != nil {
		return nil, err
	}
	if err := st.RecvMsg(resp); err != nil {
		return nil, err
	}
	if e := resp.GetErrorResponse(); e != nil {
		return nil, status.Error(codes.Code(e.GetErrorCode()), e.GetErrorMessage())
	}
	return resp, nil
}
