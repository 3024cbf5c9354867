from ragkit.cli.app import main

main()
