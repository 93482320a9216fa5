// Every OpenSSL function ward calls (src/, tests/ and bench/), for the loader (on_use.h). A call
// to one not listed here fails to link ("undefined reference"): add it here.
#pragma once

// clang-format off
#define WARD_LIBSSL_FUNCTIONS(X) \
  X(ASN1_INTEGER_get) \
  X(ASN1_INTEGER_set) \
  X(ASN1_TIME_to_tm) \
  X(BASIC_CONSTRAINTS_free) \
  X(BIO_ctrl) \
  X(BIO_ctrl_pending) \
  X(BIO_free) \
  X(BIO_new) \
  X(BIO_new_bio_pair) \
  X(BIO_read) \
  X(BIO_s_mem) \
  X(BIO_write) \
  X(BN_bin2bn) \
  X(BN_free) \
  X(BN_to_ASN1_INTEGER) \
  X(CRYPTO_memcmp) \
  X(ERR_clear_error) \
  X(ERR_error_string_n) \
  X(ERR_get_error) \
  X(ERR_lib_error_string) \
  X(ERR_print_errors_fp) \
  X(ERR_reason_error_string) \
  X(EVP_Digest) \
  X(EVP_PKEY_Q_keygen) \
  X(EVP_PKEY_free) \
  X(EVP_PKEY_get_bits) \
  X(EVP_PKEY_get_utf8_string_param) \
  X(EVP_sha256) \
  X(HMAC) \
  X(NAME_CONSTRAINTS_free) \
  X(OBJ_nid2sn) \
  X(OPENSSL_sk_num) \
  X(PEM_read_X509) \
  X(PEM_write_X509) \
  X(PEM_write_bio_X509) \
  X(RAND_bytes) \
  X(SSL_CTX_check_private_key) \
  X(SSL_CTX_ctrl) \
  X(SSL_CTX_free) \
  X(SSL_CTX_get_cert_store) \
  X(SSL_CTX_get_default_passwd_cb_userdata) \
  X(SSL_CTX_get_ex_data) \
  X(SSL_CTX_get_verify_callback) \
  X(SSL_CTX_load_verify_dir) \
  X(SSL_CTX_load_verify_file) \
  X(SSL_CTX_load_verify_locations) \
  X(SSL_CTX_new) \
  X(SSL_CTX_set_alpn_protos) \
  X(SSL_CTX_set_alpn_select_cb) \
  X(SSL_CTX_set_default_passwd_cb_userdata) \
  X(SSL_CTX_set_default_verify_paths) \
  X(SSL_CTX_set_ex_data) \
  X(SSL_CTX_set_options) \
  X(SSL_CTX_set_verify) \
  X(SSL_CTX_use_PrivateKey) \
  X(SSL_CTX_use_certificate) \
  X(SSL_accept) \
  X(SSL_connect) \
  X(SSL_ctrl) \
  X(SSL_do_handshake) \
  X(SSL_free) \
  X(SSL_get0_alpn_selected) \
  X(SSL_get0_param) \
  X(SSL_get_error) \
  X(SSL_get_ex_data) \
  X(SSL_get_servername) \
  X(SSL_get_shutdown) \
  X(SSL_get_verify_result) \
  X(SSL_is_init_finished) \
  X(SSL_new) \
  X(SSL_read) \
  X(SSL_read_ex) \
  X(SSL_set1_host) \
  X(SSL_set_accept_state) \
  X(SSL_set_alpn_protos) \
  X(SSL_set_bio) \
  X(SSL_set_connect_state) \
  X(SSL_set_ex_data) \
  X(SSL_set_fd) \
  X(SSL_set_hostflags) \
  X(SSL_shutdown) \
  X(SSL_write) \
  X(SSL_write_ex) \
  X(TLS_client_method) \
  X(TLS_method) \
  X(TLS_server_method) \
  X(X509V3_EXT_conf_nid) \
  X(X509V3_set_ctx) \
  X(X509_EXTENSION_free) \
  X(X509_NAME_add_entry_by_txt) \
  X(X509_STORE_CTX_free) \
  X(X509_STORE_CTX_get0_param) \
  X(X509_STORE_CTX_get_error) \
  X(X509_STORE_CTX_init) \
  X(X509_STORE_CTX_new) \
  X(X509_STORE_add_cert) \
  X(X509_STORE_free) \
  X(X509_STORE_new) \
  X(X509_VERIFY_PARAM_set1_host) \
  X(X509_VERIFY_PARAM_set1_ip_asc) \
  X(X509_VERIFY_PARAM_set_flags) \
  X(X509_VERIFY_PARAM_set_purpose) \
  X(X509_add_ext) \
  X(X509_check_ca) \
  X(X509_check_ip_asc) \
  X(X509_cmp) \
  X(X509_free) \
  X(X509_get0_notAfter) \
  X(X509_get0_pubkey) \
  X(X509_get_default_cert_dir) \
  X(X509_get_default_cert_dir_env) \
  X(X509_get_default_cert_file) \
  X(X509_get_default_cert_file_env) \
  X(X509_get_ext_d2i) \
  X(X509_get_serialNumber) \
  X(X509_get_subject_name) \
  X(X509_getm_notAfter) \
  X(X509_getm_notBefore) \
  X(X509_gmtime_adj) \
  X(X509_new) \
  X(X509_set_issuer_name) \
  X(X509_set_pubkey) \
  X(X509_set_version) \
  X(X509_sign) \
  X(X509_time_adj_ex) \
  X(X509_verify_cert) \
  X(X509_verify_cert_error_string)

// Functions returning void that only release what OpenSSL holds: before a load there is nothing
// to release, so their stubs return without loading (asio calls CONF_modules_unload at exit of
// every process that includes its TLS support).
#define WARD_LIBSSL_CLEANUPS(X) \
  X(CONF_modules_unload)

// clang-format on
