from killtest.harness.cli import main

main()
