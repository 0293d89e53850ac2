package vodclusterv1

// HeaderAdminAuth is the response header (gRPC metadata) in which the
// manager answers an Admin call that carries an authorization bearer
// while the manager takes no admin token (admin_token_file unset): its
// value is AdminAuthNone, the bearer was not checked. A client given a
// token warns of it: the operator could think admin authentication is on.
const HeaderAdminAuth = "vodcluster-admin-auth"

// AdminAuthNone is HeaderAdminAuth's value: the manager checks no admin
// token.
const AdminAuthNone = "none"
