package initconfig
import ("testing";"context")
func TestZZ(t *testing.T){
 for _, f := range []string{"testdata/charges.json","testdata/bookings.yaml"} {
 b, err := FromOpenAPI(context.Background(), OpenAPIOptions{Source: f, Command: "idemcheck init"})
 if err != nil { t.Fatal(err) }
 t.Log("\n"+string(b))
 }
}
