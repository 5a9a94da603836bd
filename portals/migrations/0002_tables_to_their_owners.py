# Membership moves to the tenant (timers), PortalSession to the domain (services): the tables are renamed
# here and the models created in their new apps' states by timers 0015 and services 0007, with no copy.

from django.db import migrations


class Migration(migrations.Migration):

    dependencies = [
        ('portals', '0001_initial'),
    ]

    operations = [
        migrations.SeparateDatabaseAndState(
            database_operations=[
                migrations.AlterModelTable(name='membership', table='timers_membership'),
                migrations.AlterModelTable(name='portalsession', table='services_portalsession'),
            ],
            state_operations=[
                migrations.DeleteModel(name='Membership'),
                migrations.DeleteModel(name='PortalSession'),
            ],
        ),
    ]
