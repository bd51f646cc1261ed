from orch8_server.cli import main

main()
