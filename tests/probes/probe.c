/* placeholder, replaced by the probe verbs */
int main(void) { return 0; }
